package manager

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// decisionTTL is how long an authentication and authorization decision is reused, so a scraper's every request
// does not cost two API calls. It bounds how long a revoked token keeps access.
const decisionTTL = 10 * time.Second

// maxDecisions bounds the decision cache.
const maxDecisions = 1024

// metricsAuth guards /metrics: a request needs a bearer token the apiserver authenticates (TokenReview) whose user
// may GET the path as a non-resource URL (SubjectAccessReview). It does what controller-runtime's
// filters.WithAuthenticationAndAuthorization does with client-go alone, which keeps k8s.io/apiserver (and its
// gRPC, OpenTelemetry and CEL dependencies) out of the binaries and each image near a third smaller.
func metricsAuth(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	// A budget of its own: a scrape must not wait behind the controllers' bursts of writes in the shared one.
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = nil
	cs, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	d := &decider{
		authenticate: func(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
			tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx,
				&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil || !tr.Status.Authenticated {
				return nil, err
			}
			return &tr.Status.User, nil
		},
		authorize: func(ctx context.Context, u *authenticationv1.UserInfo, path string) (bool, error) {
			extra := map[string]authorizationv1.ExtraValue{}
			for k, v := range u.Extra {
				extra[k] = authorizationv1.ExtraValue(v)
			}
			sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"}}}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return sar.Status.Allowed, nil
		},
		now:       time.Now,
		decisions: map[[32]byte]decision{},
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || token == "" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			switch code := d.decide(r.Context(), token, r.URL.Path, log); code {
			case http.StatusOK:
				next.ServeHTTP(w, r)
			default:
				http.Error(w, http.StatusText(code), code)
			}
		}), nil
	}, nil
}

type decision struct {
	code    int
	expires time.Time
}

// decider authenticates and authorizes a token for a path, remembering its answers for decisionTTL.
type decider struct {
	authenticate func(ctx context.Context, token string) (*authenticationv1.UserInfo, error)
	authorize    func(ctx context.Context, u *authenticationv1.UserInfo, path string) (bool, error)
	now          func() time.Time

	mu        sync.Mutex
	decisions map[[32]byte]decision
}

// decide returns 200, 401 (unknown token), 403 (not allowed) or 500 (the apiserver could not answer; not cached).
func (d *decider) decide(ctx context.Context, token, path string, log logr.Logger) int {
	key := sha256.Sum256([]byte(token + "\x00" + path))
	d.mu.Lock()
	if c, ok := d.decisions[key]; ok && d.now().Before(c.expires) {
		d.mu.Unlock()
		return c.code
	}
	d.mu.Unlock()

	code := http.StatusOK
	user, err := d.authenticate(ctx, token)
	switch {
	case err != nil:
		log.Error(err, "Authenticating a metrics request failed")
		return http.StatusInternalServerError
	case user == nil:
		code = http.StatusUnauthorized
	default:
		allowed, err := d.authorize(ctx, user, path)
		if err != nil {
			log.Error(err, "Authorizing a metrics request failed")
			return http.StatusInternalServerError
		}
		if !allowed {
			code = http.StatusForbidden
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.decisions) >= maxDecisions {
		d.decisions = map[[32]byte]decision{}
	}
	d.decisions[key] = decision{code: code, expires: d.now().Add(decisionTTL)}
	return code
}
