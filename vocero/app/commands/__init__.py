"""One-shot commands of ``vocero`` besides ``serve`` (SPEC §1): purge, review, profiles,
follow-up tick, schema, print-config. Each prints its result through :mod:`.output`."""
