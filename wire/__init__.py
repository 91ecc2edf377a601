"""The wire format: pydantic models of what integrators send and read, rendering stored records into
them, API versions and webhook payloads. No FastAPI: the worker renders webhook events with it."""
