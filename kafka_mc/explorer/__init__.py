"""`kafka-mc explore`: a model's state space in a browser (Stateright's Explorer, the TLA+ trace
explorer). A path is an initial state's index and the actions taken from it (`paths`); the JSON
API answers what the page shows of a step of one (`views`), for a model rebuilt from its name and
configuration (`models`), or loads a counterexample (`loading`); `app` serves the API and the page,
`server` runs it with uvicorn."""
