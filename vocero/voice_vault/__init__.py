"""Voice vault: governed corporate voices, versions, four-eyes approval and revocation."""
