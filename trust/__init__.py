"""Pure cryptography and standards: keys, multibase, DIDs, JCS, eddsa-jcs-2022, credentials.

Imports nothing of the project and does no I/O: callers pass keys and resolvers in.
"""
