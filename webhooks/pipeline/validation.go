package pipeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/modelfetch"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// Default names a lone step (step-0), sets each step's port (args.listenPort, else 8080), its replicas and its
// strategy (Recreate for a single-replica GPU step), and the storage defaults, so the stored object says what the
// controller will run.
func Default(p *inferencev1alpha1.Pipeline) {
	ms := &p.Spec.ModelStorage
	if ms.Type == inferencev1alpha1.StorageNFS {
		if ms.Driver == "" {
			ms.Driver = pipelinespec.DefaultDriver
		}
		if ms.CSI == nil {
			ms.CSI = ptr.To(true)
		}
		if ms.ReadOnly == nil {
			ms.ReadOnly = ptr.To(true)
		}
	}
	for i := range p.Spec.Steps {
		s := &p.Spec.Steps[i]
		if s.Name == "" && len(p.Spec.Steps) == 1 {
			s.Name = "step-0" // a lone step cannot be taken for another; of several, each must be named (Validate)
		}
		if s.Port == 0 {
			s.Port = pipelinespec.StepPort(*s)
		}
		if s.Replicas == nil {
			s.Replicas = ptr.To[int32](1)
		}
		if s.Strategy == "" {
			s.Strategy = pipelinespec.StepStrategy(*s)
		}
	}
}

// FollowDefaults clears the defaulted fields of p's steps (strategy, port) that still hold the value the old step's
// defaults gave them, so that Default derives them again from the new step. Defaults are stored, and a stored default
// would otherwise outlive its reason: a step given a GPU would keep the RollingUpdate it got as a CPU step (and wait
// forever for the GPU its old pod holds), a step given another listenPort would keep the old port. A value the user
// changed, or one that differs from what the old step's defaults say, is the user's and stays. A name that two
// steps share (refused, but stored while the webhook was down) pairs no steps: whose defaults would they be?
func FollowDefaults(old, p *inferencev1alpha1.Pipeline) {
	before := map[string]inferencev1alpha1.Step{}
	shared := map[string]bool{}
	for i, s := range old.Spec.Steps {
		name := pipelinespec.StepName(old.Spec.Steps, i)
		if _, seen := before[name]; seen {
			shared[name] = true
		}
		before[name] = s
	}
	count := map[string]int{}
	for i := range p.Spec.Steps {
		count[pipelinespec.StepName(p.Spec.Steps, i)]++
	}
	for i := range p.Spec.Steps {
		s := &p.Spec.Steps[i]
		name := pipelinespec.StepName(p.Spec.Steps, i)
		o, ok := before[name]
		if !ok || shared[name] || count[name] > 1 {
			continue
		}
		bare := o
		bare.Strategy = ""
		if s.Strategy != "" && s.Strategy == o.Strategy && o.Strategy == pipelinespec.StepStrategy(bare) {
			s.Strategy = ""
		}
		bare = o
		bare.Port = 0
		if s.Port != 0 && s.Port == o.Port && o.Port == pipelinespec.StepPort(bare) {
			s.Port = 0
		}
	}
}

// KeepStepNames names the unnamed steps of p that are unchanged from old at the same index, with the name old has
// for them: a manifest written before every step had to be named (its steps stored
// as step-0, step-1, … by the defaults of then), applied again as it was, is admitted and changes nothing. An unnamed step that changed, or moved, is left unnamed, and
// Validate refuses it.
func KeepStepNames(old, p *inferencev1alpha1.Pipeline) {
	n := min(len(old.Spec.Steps), len(p.Spec.Steps))
	named := p.DeepCopy()
	oldDefaulted := old.DeepCopy()
	for i := range n {
		name := pipelinespec.StepName(old.Spec.Steps, i)
		if named.Spec.Steps[i].Name == "" {
			named.Spec.Steps[i].Name = name
		}
		oldDefaulted.Spec.Steps[i].Name = name // stored unnamed (the webhook skipped it): named as the controller names it
	}
	FollowDefaults(oldDefaulted, named)
	Default(named)
	Default(oldDefaulted)
	for i := range n {
		if p.Spec.Steps[i].Name == "" && apiequality.Semantic.DeepEqual(named.Spec.Steps[i], oldDefaulted.Spec.Steps[i]) {
			p.Spec.Steps[i].Name = named.Spec.Steps[i].Name
		}
	}
}

// Validate returns every problem of a pipeline's spec with its field path: everything the apiserver would refuse
// later in a step's Deployment or Service (where it would fail on every pass instead of once, here) included.
func Validate(p *inferencev1alpha1.Pipeline) field.ErrorList {
	var errs field.ErrorList
	// The pipeline's name starts every Service name, which must be a DNS-1035 label (a letter first, no dots).
	for _, msg := range validation.IsDNS1035Label(p.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), p.Name, msg+" (it names the steps' Services)"))
	}
	sp := field.NewPath("spec")
	ms := p.Spec.ModelStorage
	mp := sp.Child("modelStorage")
	switch ms.Type {
	case inferencev1alpha1.StorageNFS:
		for _, k := range []string{"server", "share"} {
			if ms.CSIParameter[k] == "" {
				errs = append(errs, field.Required(mp.Child("csiParameter").Key(k), "type nfs needs the share's server and path"))
			}
		}
	case inferencev1alpha1.StoragePVC:
		if ms.ClaimName == "" {
			errs = append(errs, field.Required(mp.Child("claimName"), "type pvc needs an existing claim"))
		}
	case inferencev1alpha1.StorageCache:
		errs = append(errs, validateCache(mp, ms)...)
	default:
		errs = append(errs, field.NotSupported(mp.Child("type"), ms.Type, []string{"nfs", "pvc", "cache"}))
	}
	errs = append(errs, validateLocalVolume(mp.Child("cache", "localVolume"), ms.Cache)...)
	errs = append(errs, validateCABundle(mp.Child("cache", "caBundle"), ms.Cache)...)
	if ms.Capacity != nil && ms.Capacity.Sign() <= 0 {
		errs = append(errs, field.Invalid(mp.Child("capacity"), ms.Capacity.String(),
			"must be greater than zero: the PersistentVolume and claim need a size"))
	}
	if len(p.Spec.Steps) == 0 {
		errs = append(errs, field.Required(sp.Child("steps"), "a pipeline needs at least one step"))
	}
	for i, s := range p.Spec.Steps {
		stp := sp.Child("steps").Index(i)
		name := pipelinespec.StepName(p.Spec.Steps, i)
		if s.Name == "" {
			errs = append(errs, field.Required(stp.Child("name"), "name every step of a pipeline of more than one: "+
				"a step's identity is its name, and one named by its position would take over another step's "+
				"Deployment, node and model when a step is inserted before it"))
			continue
		}
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(stp.Child("name"), name, msg))
		}
		if len(p.Name)+1+len(name) > 63 {
			errs = append(errs, field.TooLong(stp.Child("name"), name, 63-len(p.Name)-1))
		}
		if s.Image == "" {
			errs = append(errs, field.Required(stp.Child("image"), ""))
		}
		// The location is matched against the nodes' kubernetes.io/hostname label: it must be a label value.
		for _, msg := range validation.IsValidLabelValue(s.Location) {
			errs = append(errs, field.Invalid(stp.Child("location"), s.Location, msg+" (it names a node by its kubernetes.io/hostname label)"))
		}
		errs = append(errs, validateEnv(stp.Child("env"), s.Env)...)
		errs = append(errs, validateTolerations(stp.Child("tolerations"), s.Tolerations)...)
		errs = append(errs, validateModel(stp.Child("model"), s.Model, ms)...)
		errs = append(errs, validateResources(stp.Child("resources"), s.Resources)...)
		errs = append(errs, validateReadiness(stp.Child("readiness"), s)...)
		errs = append(errs, validateProbe(stp.Child("readinessProbe"), s.ReadinessProbe)...)
		if v, ok := s.Args["listenPort"]; ok {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
				errs = append(errs, field.Invalid(stp.Child("args").Key("listenPort"), v, "must be a port number"))
			}
		}
	}
	_, wiringErrs := pipelinespec.Wire(p.Spec.Steps)
	return append(errs, wiringErrs...)
}

// validateEnv refuses an env var the controller sets itself, a name given twice (the step's container lists the env
// by name, so server-side apply refuses either on every pass), and a name the apiserver refuses in a container:
// empty, or with '=' or a character that is not printable ASCII.
func validateEnv(fp *field.Path, env []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for j, e := range env {
		np := fp.Index(j).Child("name")
		switch {
		case e.Name == "":
			errs = append(errs, field.Required(np, ""))
		case strings.IndexFunc(e.Name, func(r rune) bool { return r == '=' || r < ' ' || r > '~' }) >= 0:
			errs = append(errs, field.Invalid(np, e.Name, "must consist of printable ASCII characters other than '='"))
		case slices.Contains(pipelinespec.ControllerEnv, e.Name):
			errs = append(errs, field.Invalid(np, e.Name, fmt.Sprintf("is set by the pipeline controller on every step (%s): choose another name",
				strings.Join(pipelinespec.ControllerEnv, ", "))))
		case seen[e.Name]:
			errs = append(errs, field.Duplicate(np, e.Name))
		}
		seen[e.Name] = true
	}
	return errs
}

// validateTolerations checks what the apiserver checks of a pod's tolerations, which would otherwise refuse the step's
// Deployment on every pass: a known operator (Equal, or Exists with no value), a key that is a qualified name (or
// none, with Exists), a value that is a label value, a known effect, and tolerationSeconds only with NoExecute.
func validateTolerations(fp *field.Path, tolerations []corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		tp := fp.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(tp.Child("key"), t.Key, msg))
			}
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if t.Key == "" {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "must be Exists when the key is empty"))
			}
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, "must be empty when the operator is Exists"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator,
				[]string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, []string{string(corev1.TaintEffectNoSchedule),
				string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
		}
	}
	return errs
}

// validateCache checks storage cache: it takes no share or claim (where the cache is on the nodes, and its bound,
// are the controller's, not the pipeline's).
func validateCache(mp *field.Path, ms inferencev1alpha1.ModelStorage) field.ErrorList {
	var errs field.ErrorList
	if len(ms.CSIParameter) > 0 {
		errs = append(errs, field.Forbidden(mp.Child("csiParameter"), "type cache fetches each step's model from its URI: it takes no share"))
	}
	if ms.ClaimName != "" {
		errs = append(errs, field.Forbidden(mp.Child("claimName"), "type cache fetches each step's model from its URI: it takes no claim"))
	}
	return errs
}

// validateModel checks a step's model by its form: a URI the controller can serve (http, https and s3 fetched into
// the cache, an s3 one only with the Secret that says where the store is; pvc:// on a claim), or a path that stays
// inside the pipeline's storage, which storage cache does not have.
func validateModel(fp *field.Path, model string, ms inferencev1alpha1.ModelStorage) field.ErrorList {
	switch pipelinespec.SourceOf(model) {
	case pipelinespec.ModelOnClaim:
		if _, _, err := pipelinespec.ParseClaimModel(model); err != nil {
			return field.ErrorList{field.Invalid(fp, model, err.Error())}
		}
		return nil
	case pipelinespec.ModelFetched:
		src, err := modelfetch.Parse(model)
		if err != nil {
			return field.ErrorList{field.Invalid(fp, model, err.Error())}
		}
		if src.Scheme == modelfetch.SchemeS3 && (ms.Cache == nil || ms.Cache.S3SecretName == "") {
			return field.ErrorList{field.Invalid(fp, model, "an s3:// model needs modelStorage.cache.s3SecretName, "+
				"the Secret that names the store's endpoint (and its keys)")}
		}
		return nil
	}
	if ms.Type == inferencev1alpha1.StorageCache {
		if model == "" {
			return field.ErrorList{field.Required(fp, "with storage cache a step's model is its URI: http(s)://host/file, "+
				"s3://bucket/prefix or pvc://claim/path")}
		}
		return field.ErrorList{field.Invalid(fp, model, "with storage cache a step's model is a URI (http(s)://, s3:// or "+
			"pvc://): there is no share to hold a path")}
	}
	if err := pipelinespec.CheckSubPath(model); err != nil {
		return field.ErrorList{field.Invalid(fp, model, err.Error())}
	}
	return nil
}

// validateLocalVolume checks the cache on local volumes: a size above zero (the claims ask for it, and the cache
// evicts to stay below it).
func validateLocalVolume(fp *field.Path, c *inferencev1alpha1.ModelCache) field.ErrorList {
	if c == nil || c.LocalVolume == nil {
		return nil
	}
	var errs field.ErrorList
	if c.LocalVolume.StorageClassName == "" {
		errs = append(errs, field.Required(fp.Child("storageClassName"), "the class of the nodes' local volumes the cache claims bind to"))
	}
	if sz := c.LocalVolume.Size; sz != nil && sz.Sign() <= 0 {
		errs = append(errs, field.Invalid(fp.Child("size"), sz.String(), "must be greater than zero: each cache claim asks for it"))
	}
	return errs
}

// validateCABundle checks the ConfigMap key of a private CA's certificates: a ConfigMap's name and one of its keys,
// which the steps' pods mount.
func validateCABundle(fp *field.Path, c *inferencev1alpha1.ModelCache) field.ErrorList {
	if c == nil || c.CABundle == nil {
		return nil
	}
	var errs field.ErrorList
	if c.CABundle.Name == "" {
		errs = append(errs, field.Required(fp.Child("name"), "the ConfigMap of the namespace that holds the certificates"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.CABundle.Name) {
			errs = append(errs, field.Invalid(fp.Child("name"), c.CABundle.Name, msg))
		}
	}
	if c.CABundle.Key != "" {
		for _, msg := range validation.IsConfigMapKey(c.CABundle.Key) {
			errs = append(errs, field.Invalid(fp.Child("key"), c.CABundle.Key, msg))
		}
	}
	return errs
}

// validateResources checks what the apiserver checks of a container's resources: an extended resource (a GPU, a
// MIG slice) cannot be overcommitted, so it needs a limit, equal to its request; no request exceeds its limit.
func validateResources(fp *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for name, req := range r.Requests {
		lim, limited := r.Limits[name]
		switch {
		case isExtended(name) && !limited:
			errs = append(errs, field.Required(fp.Child("limits").Key(string(name)),
				fmt.Sprintf("%s is requested without a limit: extended resources such as GPUs cannot be overcommitted; set the limit (the request defaults to it)", name)))
		case isExtended(name) && req.Cmp(lim) != 0:
			errs = append(errs, field.Invalid(fp.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must equal the limit (%s): extended resources such as GPUs cannot be overcommitted", lim.String())))
		case limited && req.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(fp.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the limit (%s)", lim.String())))
		}
	}
	return errs
}

// isExtended reports whether a resource is an extended one (a domain-qualified name outside kubernetes.io, such as
// nvidia.com/gpu or nvidia.com/mig-1g.5gb), as the apiserver defines it.
func isExtended(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.HasPrefix(n, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix)
}

// NameClashes finds the steps of p whose Deployment and Service names (<pipeline>-<step>) are those of a step of
// another pipeline of the namespace: pipeline a with step b-c and pipeline a-b with step c both make a-b-c. The
// names stay (users and scripts know them); a clash is refused here, and the controller never writes over an object that is
// not its pipeline's (reason NameTaken) if two pipelines race past this check.
func NameClashes(p *inferencev1alpha1.Pipeline, others []inferencev1alpha1.Pipeline) field.ErrorList {
	taken := map[string]string{}
	for i := range others {
		q := &others[i]
		if q.Name == p.Name {
			continue
		}
		for j := range q.Spec.Steps {
			step := pipelinespec.StepName(q.Spec.Steps, j)
			taken[pipelinespec.StepObjectName(q, step)] = fmt.Sprintf("step %s of pipeline %s", step, q.Name)
		}
	}
	var errs field.ErrorList
	for i := range p.Spec.Steps {
		step := pipelinespec.StepName(p.Spec.Steps, i)
		if other, ok := taken[pipelinespec.StepObjectName(p, step)]; ok {
			errs = append(errs, field.Invalid(field.NewPath("spec", "steps").Index(i).Child("name"), step,
				fmt.Sprintf("its Deployment and Service would be named %s, like those of %s: rename the step or the pipeline",
					pipelinespec.StepObjectName(p, step), other)))
		}
	}
	return errs
}

// ValidateUpdate checks what may not change: the model storage, but for its cache settings (a cache is filled
// anew; moving the models themselves needs a new pipeline).
func ValidateUpdate(old, p *inferencev1alpha1.Pipeline) field.ErrorList {
	om, nm := old.Spec.ModelStorage, p.Spec.ModelStorage
	om.Cache, nm.Cache = nil, nil
	if !apiequality.Semantic.DeepEqual(om, nm) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "modelStorage"), "",
			"spec.modelStorage is immutable but for its cache: create a new pipeline to move its models")}
	}
	return nil
}
