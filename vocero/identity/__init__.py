"""Identity and profiles: who is calling and which agent profile governs the session."""
