"""tests/security/: hostile input, abuse and ordering faults (issue 12), one module per class."""
