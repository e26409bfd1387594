// Package leaktest holds the goleak options shared by the packages whose
// tests run protoactor-go or goja.
package leaktest

import "go.uber.org/goleak"

// Options ignores goroutines that are not leaks but outlive a test run on
// their own schedule:
//   - regexp2's clock, a process-wide timer goroutine goja's regexps start;
//   - protoactor's dead-letter throttle, which every dead letter starts and
//     which ends by itself one second later (a test ending less than a
//     second after a dead letter would otherwise fail goleak);
//   - the cluster's gossip throttles and its pub-sub delivery throttle,
//     likewise: each ends by itself after its period, also after the
//     member left;
//   - the seeds provider's (protoactor's automanaged) status monitor, which
//     sleeps its refresh interval (500 ms) before it sees the member left,
//     and the etcd provider's keep-alive loop, which sleeps 1 s likewise.
var Options = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*PubSub).Start.func1.NewPubSubMemberDeliveryActor.NewThrottleWithLogger.2.1"),
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged.(*AutoManagedProvider).monitorStatuses"),
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd.(*Provider).startKeepAlive.func1"),
}
