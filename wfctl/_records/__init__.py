"""The records: what is written.

Checkpoints and their ids, one payload class per kind, the records of attempts and failures, the
recorded step results and the value codec. Storage and the engine read and write these; they
import only the helpers.
"""
