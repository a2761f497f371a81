// Package simcluster is the one way a test or a program stands up a
// simulated OpenShift cluster: a real control plane (libs/testenv), the
// cluster's objects seeded from a Topology, and ocpsim playing the OpenShift
// operators against it, stopped together in reverse order.
//
//	c, err := simcluster.Start(ctx, simcluster.Options{
//		ControlPlane: testenv.Options{ControllerManager: true, Scheduler: true, Kwok: true},
//		Seed:         &ocpsim.Topology{Version: "4.16.1", Masters: 3, Workers: 6},
//		Sim:          &ocpsim.Options{TimeScale: 600},
//	})
//	defer c.Stop()
//
// e2e/framework builds on it with chart identities and the components under
// test; the controller suites of the services, which cannot import e2e, use
// it directly. Without Seed and Sim it is a bare control plane, for tests of
// webhooks, CLIs and controllers that read no OpenShift operator. Simulate
// adds a seeded, simulated cluster to a control plane already running, for a
// suite that shares one control plane between specs.
package simcluster

import (
	"context"
	"errors"
	"sync"

	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
	"github.com/upshift-io/upshift/tools/ocpsim/seed"
)

// Options say what to start.
type Options struct {
	// ControlPlane chooses the parts of the control plane (etcd and
	// kube-apiserver always run).
	ControlPlane testenv.Options
	// BeforeSeed runs once the control plane is up, before anything is
	// seeded: what must answer before the seeded objects are created (a
	// webhook server whose failure policy is Fail).
	BeforeSeed func(ctx context.Context, env *testenv.Env) error
	// Seed is the cluster to create; nil seeds nothing.
	Seed *ocpsim.Topology
	// Sim runs ocpsim with these options; nil runs none.
	Sim *ocpsim.Options
}

// Cluster is a running control plane with, when asked for, a seeded and
// simulated cluster on it.
type Cluster struct {
	*testenv.Env
	*Simulation
}

// Start starts the control plane, then seeds and simulates the cluster. On
// error nothing is left running.
func Start(ctx context.Context, o Options) (_ *Cluster, retErr error) {
	env, err := testenv.Start(ctx, o.ControlPlane)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, Simulation: &Simulation{}}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()
	if o.BeforeSeed != nil {
		if err := o.BeforeSeed(ctx, env); err != nil {
			return nil, err
		}
	}
	if c.Simulation, err = simulate(ctx, env, o.Seed, o.Sim); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop stops the simulator, then the control plane. It is safe to call more
// than once.
func (c *Cluster) Stop() error {
	return errors.Join(c.Simulation.Stop(), c.Env.Stop())
}

// Simulation is a seeded cluster and the simulator running on it.
type Simulation struct {
	// Objects are what Seed created (nil without a Topology).
	Objects *seed.Objects

	env  *testenv.Env
	mu   sync.Mutex
	sim  *ocpsim.Sim
	stop func() error
}

// Simulate seeds t into env's control plane and runs ocpsim with o until
// Stop.
func Simulate(ctx context.Context, env *testenv.Env, t ocpsim.Topology, o ocpsim.Options) (*Simulation, error) {
	return simulate(ctx, env, &t, &o)
}

func simulate(ctx context.Context, env *testenv.Env, t *ocpsim.Topology, o *ocpsim.Options) (*Simulation, error) {
	s := &Simulation{env: env}
	if t != nil {
		objs, err := ocpsim.Seed(ctx, env.Client, *t)
		if err != nil {
			return nil, err
		}
		s.Objects = objs
	}
	if o != nil {
		if err := s.Restart(*o); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Sim is the running simulator (nil without one).
func (s *Simulation) Sim() *ocpsim.Sim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sim
}

// Restart stops the simulator, if one runs, and runs a new one with o: a
// bench that measures one update per time scale changes it between updates.
// The simulator runs until Stop, not until the caller's context ends: a
// suite's setup context ends long before its specs do.
func (s *Simulation) Restart(o ocpsim.Options) error {
	if err := s.Stop(); err != nil {
		return err
	}
	sim, err := ocpsim.New(s.env.Config, o)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sim, s.stop = sim, sim.Start(context.Background())
	return nil
}

// Stop stops the simulator and returns what it returned; the seeded objects
// stay. It is safe to call more than once.
func (s *Simulation) Stop() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop()
}
