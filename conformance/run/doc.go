// Package run is the one description of a conformance run that every
// runner reads: the simulator (conformance/sim), the live runner against
// real processes, the local process cluster (conformance/cluster), the
// `watermark serve` flags, and run files.
//
// A Spec is a whole run: the cluster's shape, its protocol Settings (every
// broker's and the controller's, the types impl/ itself runs with, from
// impl/settings, so that a run is described without compiling a core), the
// network, the clients' workload, the faults and failpoints, and the
// run's bounds. A run file (File, failpoints/RUNFILE.md) is a Spec in
// YAML with what the run must show. A Result is what a run produced.
//
// Each kind of fault has one definition (FaultDef, Def, faultdefs.go):
// what it strikes, what a target must offer to carry it out
// (Capabilities; Available, Spec.Needs) and how it strikes, composed of
// the primitives every runner implements (Striker): the simulator and the
// live runner look a fault up instead of switching on its kind.
//
// Adding a broker setting is one field with its yaml and doc tags in
// impl/settings (Partition, Broker, Group, Controller), and its use in
// impl/: run files, flags and the process cluster find it by reflection
// (Fields).
package run
