"""Adapters the composition root wires into the planes: the session factory, the recorder, the
telemetry ports, start-up recovery, the profile registry, the follow-up plane's wiring and the
gauges read at scrape time."""
