class Listener:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("pynput stand-in: no keyboard")
