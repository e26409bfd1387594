package forge

// The forge actor's messages are protobuf messages, defined in
// forgepb/forge.proto (Run and Resume -> Done, Cancel) so that they can
// cross nodes; callers use Client, never the raw messages. The caller's
// rights travel as its capability token (executorpb.Caller), its quota is
// charged through Options.Charger, never through a closure.
