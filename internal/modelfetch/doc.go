// Package modelfetch fetches a pipeline step's model from where its URI says (http, https, s3) into a node-local
// cache, and unpacks archives safely. It is the code of the pipeline-controller's fetch-model subcommand, which a
// step runs as an init container: the controller's own image, so an air-gapped cluster needs nothing new.
//
// The cache is a directory on the node. An entry is keyed by the model's URI and the digest of its content:
//
//	<root>/<uri key>/<digest>/model/      the model, as the step sees it
//	<root>/<uri key>/<digest>/entry.json  where it came from, its size, the source's validators, when last used
//	<root>/.tmp/                          downloads in progress (renamed into place when complete)
//
// A URI pinned to a digest (…#sha256=<hex>) is a cache hit without asking the source anything. Otherwise the
// newest entry of the URI is revalidated with the source (an HTTP conditional request, the S3 objects' ETags) and
// used when unchanged; a changed model is fetched beside the old one. Entries are evicted least recently used
// first, once the cache holds more than its bound.
package modelfetch
