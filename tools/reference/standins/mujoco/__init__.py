"""Stand-in for mujoco, import only: upstream's demo modules name mujoco.MjModel/MjData in
annotations; the recorder never builds a simulator (the controller reads a namespace)."""

__version__ = "0-standin"


class MjModel:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("mujoco stand-in: no simulator")

    @staticmethod
    def from_xml_path(path):
        raise RuntimeError("mujoco stand-in: no simulator")


class MjData(MjModel):
    pass


def mj_forward(model, data):
    pass
