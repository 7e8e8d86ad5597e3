// Package pipelinespec holds the rules of a Pipeline's spec that the controller and the webhook both follow: the
// steps' names and defaults (port, strategy), how the steps are wired together, the forms a step's model takes,
// what a step asks of its node. It reads the spec and nothing else: no client, no cache.
package pipelinespec
