"""Follow-ups (call-backs): no call-back is promised without a record (seed 003)."""
