"""Code written for agent-framework's functional API, run on wfctl through the public API."""
