"""The phone leg of the relay: carriers' media streams as a transport beside ``/v1/realtime``
(SPEC §10, ``docs/telephony.md``).

A carrier is an adapter: :mod:`.twilio` holds Twilio's message set, signature and TwiML (a
second carrier is a second such module); :mod:`.audio` converts between the carrier's 8 kHz
μ-law and the session's PCM16; :mod:`.tickets` binds a webhook's answer to the stream it
announces; :mod:`.voice_webhook` and :mod:`.stream` serve the two routes, the second opening an
ordinary session through the relay's session factory.
"""
