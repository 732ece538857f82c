// Command localengines serves the local engines `sam local` points the functions at, and
// writes the SAM environment file (local/scripts/local-engines.sh runs it; DECISIONS SL22-*):
//
//	localengines s3 [-addr A] -bucket B [-upload DIR -prefix P]   gofakes3, in memory
//	localengines converse [-addr A] -script FILE                  the Converse fake (local/conversefake)
//	localengines table -endpoint URL -table T                     the session-log table in DynamoDB Local
//	localengines env -template FILE -dynamodb URL -s3 URL -bedrock URL -table T -bucket B [-o FILE]
//
// A server listens on -addr (default 0.0.0.0:0: every interface, so a container reaches it
// through host.docker.internal; port 0 picks a free one), prints ENDPOINT=http://127.0.0.1:<port>
// on stdout once it accepts connections, and serves until SIGINT or SIGTERM. `env` prints the
// file (local/samenv) to stdout, or writes it to -o. Exit status 2 is a usage error, 1 any other.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/archmax-ai/archmax/core/model/scripted"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/upload"
	"github.com/archmax-ai/archmax/local/conversefake"
	"github.com/archmax-ai/archmax/local/samenv"
)

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	err := run(os.Args[1:], os.Stdout)
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "localengines:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "localengines:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"usage: localengines s3|converse|table|env [flags]"}
	}
	fset := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	str := func(name, def, usage string) *string { return fset.String(name, def, usage) }
	addr := str("addr", "0.0.0.0:0", "listen address")
	parse := func() error {
		if err := fset.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if fset.NArg() > 0 {
			return usageError{"unexpected arguments: " + strings.Join(fset.Args(), " ")}
		}
		return nil
	}
	need := func(vals map[string]string) error {
		for k, v := range vals {
			if strings.TrimSpace(v) == "" {
				return usageError{args[0] + " needs -" + k}
			}
		}
		return nil
	}
	switch args[0] {
	case "s3":
		bucket, upload, prefix := str("bucket", "", "bucket to create"), str("upload", "", "directory copied into the bucket"), str("prefix", "specs/", "key prefix of the copy")
		if err := parse(); err != nil {
			return err
		}
		if err := need(map[string]string{"bucket": *bucket}); err != nil {
			return err
		}
		backend := s3mem.New()
		if err := backend.CreateBucket(*bucket); err != nil {
			return err
		}
		if *upload != "" {
			if err := uploadDir(backend, *bucket, *upload, *prefix); err != nil {
				return err
			}
		}
		return serve(*addr, gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server(), stdout)
	case "converse":
		file := str("script", "", "the model script (*.model.yaml) the fake answers from")
		if err := parse(); err != nil {
			return err
		}
		if err := need(map[string]string{"script": *file}); err != nil {
			return err
		}
		src, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		script, err := scripted.Parse(*file, src)
		if err != nil {
			return err
		}
		return serve(*addr, conversefake.New(script), stdout)
	case "table":
		endpoint, table := str("endpoint", "", "DynamoDB endpoint"), str("table", "", "table name")
		if err := parse(); err != nil {
			return err
		}
		if err := need(map[string]string{"endpoint": *endpoint, "table": *table}); err != nil {
			return err
		}
		return ensureTable(*endpoint, *table)
	case "env":
		template, ddb, s3, bedrock := str("template", "", "synthesized template (cdk.out/archmax-<stage>.template.json)"),
			str("dynamodb", "", "DynamoDB endpoint"), str("s3", "", "S3 endpoint"), str("bedrock", "", "Bedrock endpoint")
		table, bucket, out := str("table", "", "table name"), str("bucket", "", "bucket name"), str("o", "", "file to write (default stdout)")
		if err := parse(); err != nil {
			return err
		}
		if err := need(map[string]string{"template": *template}); err != nil {
			return err
		}
		src, err := os.ReadFile(*template)
		if err != nil {
			return err
		}
		f, err := samenv.Generate(src, samenv.Engines{DynamoDB: *ddb, S3: *s3, Bedrock: *bedrock, Table: *table, Bucket: *bucket})
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if *out == "" {
			_, err = stdout.Write(b)
			return err
		}
		return os.WriteFile(*out, b, 0o644)
	}
	return usageError{"unknown command " + args[0] + " (s3, converse, table, env)"}
}

// serve listens on addr, prints the endpoint and serves h until SIGINT or SIGTERM.
func serve(addr string, h http.Handler, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "ENDPOINT=http://127.0.0.1:%d\n", ln.Addr().(*net.TCPAddr).Port)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// uploadDir copies the files of the workspace dir a deployment uploads (upload.Files: the
// authored tree — no model scripts, workflow tests/, .env files or session store) into
// bucket at prefix + their slash-separated path, so the functions under `sam local` read
// what they read deployed.
func uploadDir(b *s3mem.Backend, bucket, dir, prefix string) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	files, err := upload.Files(dir)
	if err != nil {
		return err
	}
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if _, err := b.PutObject(bucket, prefix+rel, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
			return err
		}
	}
	return nil
}

// ensureTable creates the session-log table (core/store/dynamodb.CreateTable) in the engine
// at endpoint unless it exists, with the static credentials DynamoDB Local takes.
func ensureTable(endpoint, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return ddbstore.CreateTable(ctx, c, table)
	}
	return err
}
