// Package webhookca decides the certificates of the webhooks' self-signed mode, a pure sub-domain of the binaries'
// runtime: when a CA or a serving certificate is to be issued (PlanIssue), issuing them (IssueCA, IssueServing),
// the CA bundle a webhook configuration carries through a rotation (MergeBundle), and which certificate a replica
// serves (ChooseServing, ServingCert). Reading the Secret and writing the bundles is the caller's (the manager's
// certificate pass); nothing here does I/O.
package webhookca
