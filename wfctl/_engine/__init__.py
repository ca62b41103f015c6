"""The engine: what runs a workflow.

The definition (``_workflow``), admission and driving of one run, the run loop and its port, the
context, steps and keys, the chain, policies, events, results and streaming. It imports storage
(through the contract), the records and the helpers, never the command line, the renderer, the
inspector or what drives it.
"""
