"""`headwater validate`: compare captured source tables with their pipeline targets."""
