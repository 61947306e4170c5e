"""tests/security/: hostile input, abuse and ordering faults, one module per class."""
