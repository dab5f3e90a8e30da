import motionbricks as mb

model = mb.Model("models/g1-f32", device="cpu")
walk = model.load_style("styles/walk.mbstyle")
agent = model.agent()
agent.reset(walk)                                              # history = the walk clip
command = mb.Command(walk, movement_direction=(0, 0, 1))       # motion space: Y up, +Z forward
for _ in range(3):
    plan = agent.plan(command)                                 # 24..64 frames at 30 fps
    qpos = plan.mujoco_qpos                                    # [frames, 36] numpy view, no copy
    print(plan.frame_count, "frames, root ends at", qpos[-1, :3])
    agent.advance(16)                                          # frames shown before the next plan
