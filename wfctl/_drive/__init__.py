"""What the command line's ``run``, ``resume``, ``replay``, ``submit`` and ``worker`` drive.

Loading a workflow's code, finding the store and its durability, reading inputs and answers, and
one engine call on its own event loop (Ctrl-C pauses).
"""
