"""What the command line's run, resume, replay, submit and worker commands drive: loading code, finding the store, one engine call."""
