package main

import (
	"fmt"
	"log"

	"motionbricks"
)

func main() {
	lib, err := motionbricks.Open() // checks the C ABI version
	if err != nil {
		log.Fatal(err)
	}
	model, err := lib.LoadModel("models/g1-f32", &motionbricks.Options{Device: motionbricks.DeviceCPU})
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	walk, err := model.LoadStyle("styles/walk.mbstyle")
	if err != nil {
		log.Fatal(err)
	}
	defer walk.Close()
	agent, err := model.NewAgent()
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	cmd, err := lib.NewCommand()
	if err != nil {
		log.Fatal(err)
	}
	defer cmd.Close()
	if err := agent.Reset(walk); err != nil { // history = the walk clip
		log.Fatal(err)
	}
	cmd.SetStyle(walk)
	cmd.SetMovement(0, 0, 1) // motion space: Y up, +Z forward
	for i := 0; i < 3; i++ {
		plan, err := agent.Plan(cmd) // 24..64 frames at 30 fps
		if err != nil {
			log.Fatal(err)
		}
		qpos, _ := plan.MujocoQpos() // [frames*36] G1 MuJoCo qpos
		fmt.Printf("%d frames, root ends at %v\n", len(qpos)/36, qpos[len(qpos)-36:len(qpos)-33])
		plan.Close()
		agent.Advance(16) // frames shown before the next plan
	}
}
