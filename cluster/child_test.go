package cluster

const childEnv = "AGENTOS_CLUSTER_TEST_CHILD"

func runChild(role string) int { return 2 }
