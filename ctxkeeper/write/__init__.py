"""The write path: the verbs, the checks a candidate passes (capture; similarity's rules and the
candidate index that shortlists what they compare), and team import and export (exchange)."""
