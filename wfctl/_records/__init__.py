"""The records: what is written (checkpoints, payload kinds, the value codec, attempts and failures, recorded code)."""
