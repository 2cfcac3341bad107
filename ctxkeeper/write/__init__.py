"""The write path: the checks a candidate entry passes (capture, similarity) and the verbs."""
