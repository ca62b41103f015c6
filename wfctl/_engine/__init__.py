"""The engine: what runs a workflow (definition, admission, the run, its context, steps and keys, the chain, policies, events, results, streaming)."""
