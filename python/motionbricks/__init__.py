"""MotionBricks converter: upstream checkpoints to the GGUF model bundle v1."""
