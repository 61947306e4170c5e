"""What the stories stage's Beam modules share: the namespace their Beam counters count in."""

STAGE = "stories"
