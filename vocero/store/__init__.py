"""Durable store: SQLAlchemy models, migrations, the hash-chained audit log."""
