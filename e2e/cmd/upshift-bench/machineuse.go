package main

import (
	"context"

	"k8s.io/client-go/rest"
)

// machineUse is what the machine spent between two readings: CPU by
// program, the simulator's queues and the API server's traffic.
type machineUse struct {
	cpu    cpuUse
	queues queueUse
	api    apiTraffic
}

func readMachineUse(ctx context.Context, cfg *rest.Config) (machineUse, error) {
	var u machineUse
	var err error
	if u.cpu, err = readCPU(); err != nil {
		return u, err
	}
	if u.queues, err = readQueues(); err != nil {
		return u, err
	}
	u.api, err = readAPITraffic(ctx, cfg)
	return u, err
}

func (u machineUse) since(before machineUse) machineUse {
	return machineUse{cpu: u.cpu.since(before.cpu), queues: u.queues.since(before.queues), api: u.api.since(before.api)}
}
