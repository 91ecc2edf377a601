"""Use cases: every operation that changes state, done by a named actor, called alike by the REST
API, the command line, the dashboard and the activities. Above `orchestration`, `wire` and `store`."""
