module github.com/agentrl/agentrl

go 1.24
