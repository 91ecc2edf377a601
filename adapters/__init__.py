"""The adapters to the outside world: delivering a subject's code by e-mail or SMS
(``delivery``), identity verification providers (``kyc``) and outbound HTTP to the addresses an
integrator chose (``egress``). ``orchestration`` is Temporal alone (ADR 0017)."""
