package assembly

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/outbound"
	ebsink "github.com/archmax-ai/archmax/core/outbound/eventbridge"
	"github.com/archmax-ai/archmax/core/store"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/functions/handlers/hostenv"
)

// hostEnv is how the functions apply the host file (read from <SpecPrefix>archmax.host.yaml
// through the authored tree's ETag cache): the build's tool kinds over the function's AWS
// configuration, each mount served from its s3:// location, every lifecycle event written
// to log (at the levels the file leaves on) and notifications published to the file's bus. A file whose digest is not
// the deployed one (cfg.HostFileSHA256) is logged once as a warning on log.
func hostEnv(cfg Config, awsCfg aws.Config, s3c *s3.Client, log *slog.Logger) host.Env {
	return host.Env{
		Deployed: cfg.HostFileSHA256,
		Log:      log,
		Kinds:    hostenv.Kinds(),
		Deps: hostenv.AWS{Config: func(context.Context) (aws.Config, error) { return awsCfg, nil },
			LambdaEndpoint: cfg.LambdaEndpoint}.Deps(),
		Mount: func(_ context.Context, m hostconfig.MountDecl) (store.Files, string, error) {
			return s3Mount(cfg, s3c, m)
		},
		EventLog: log,
		Sink: func(_ context.Context, s hostconfig.EventBridgeSink) (outbound.Sink, error) {
			// the SDK's own endpoint settings apply (AWS_ENDPOINT_URL_EVENTBRIDGE, locally)
			return ebsink.New(awseb.NewFromConfig(awsCfg), s.Bus), nil
		},
	}
}

// s3Mount opens a mount's S3 location. A mount with no s3 location, or one overlapping the
// bucket's spec or session prefix (the authoring plane and the sessions would be served as
// a mount), is refused.
func s3Mount(cfg Config, client s3store.API, m hostconfig.MountDecl) (store.Files, string, error) {
	bucket, key, ok := m.S3Location()
	if !ok {
		return nil, "", fmt.Errorf("it has no s3 location: the functions serve mounts from S3 (s3: s3://bucket/prefix/)")
	}
	if bucket == cfg.Bucket {
		for _, p := range []string{cfg.SpecPrefix, cfg.SessionPrefix} {
			if strings.HasPrefix(key, p) || strings.HasPrefix(p, key) || (!m.File && p == "") {
				return nil, "", fmt.Errorf("s3://%s/%s overlaps s3://%s/%s, which holds the %s: no mount may serve it",
					bucket, key, bucket, p, map[bool]string{true: "specs (the authoring plane)", false: "sessions"}[p == cfg.SpecPrefix])
			}
		}
	}
	var opts []s3store.Option
	if m.ReadOnly {
		opts = append(opts, s3store.ReadOnly())
	}
	if m.File {
		dir := path.Dir(key)
		if dir == "." {
			dir = ""
		}
		return s3store.NewFiles(client, bucket, dir, opts...), path.Base(key), nil
	}
	return s3store.NewFiles(client, bucket, key, opts...), "", nil
}
