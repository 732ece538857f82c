package workspace

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestValidAttachmentName(t *testing.T) { // 02 §1.8 "not a plain file name"
	for _, name := range []string{"invoice.pdf", "notes", ".env", "a.tar.gz", "résumé 2024 (final).docx", strings.Repeat("x", 255)} {
		if err := ValidAttachmentName(name); err != nil {
			t.Errorf("ValidAttachmentName(%q) = %v; want nil", name, err)
		}
	}
	tests := []struct{ name, cause string }{
		{"", "it is empty"},
		{".", "it is '.'"},
		{"..", "it is '..'"},
		{"a/b.txt", "it contains a path separator"},
		{`a\b.txt`, "it contains a path separator"},
		{"a\x00b", "it contains a control character"},
		{"line\nbreak", "it contains a control character"},
		{"del\x7f", "it contains a control character"},
		{strings.Repeat("é", 128), "it is longer than 255 bytes"}, // 256 bytes
	}
	for _, tt := range tests {
		err := ValidAttachmentName(tt.name)
		if !errors.Is(err, ErrInvalidAttachmentName) || !strings.HasSuffix(err.Error(), ": "+tt.cause) {
			t.Errorf("ValidAttachmentName(%q) = %v; want ErrInvalidAttachmentName: %s", tt.name, err, tt.cause)
		}
	}
}

func TestPlaceAttachment(t *testing.T) { // 02 §1.8 placement
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		ctx := context.Background()
		f := newFixture(t)
		f.file(t, "scratchpad/attachments/taken/inner.txt", "a folder holds the name 'taken'")
		tests := []struct {
			name string
			data string
			want string
		}{
			{"invoice.pdf", "%PDF-1\x00\xff", "scratchpad/attachments/invoice.pdf"},
			{"invoice.pdf", "second", "scratchpad/attachments/invoice-1.pdf"},
			{"invoice.pdf", "third", "scratchpad/attachments/invoice-2.pdf"},
			{"notes", "n", "scratchpad/attachments/notes"},
			{"notes", "n2", "scratchpad/attachments/notes-1"},
			{"a.tar.gz", "t", "scratchpad/attachments/a.tar.gz"},
			{"a.tar.gz", "t2", "scratchpad/attachments/a.tar-1.gz"},
			{".env", "K=V", "scratchpad/attachments/.env"},
			{".env", "K=W", "scratchpad/attachments/.env-1"},
			{"taken", "x", "scratchpad/attachments/taken-1"},
			{"empty.txt", "", "scratchpad/attachments/empty.txt"},
		}
		for _, tt := range tests {
			got, err := f.ws.PlaceAttachment(ctx, tt.name, []byte(tt.data))
			if err != nil || got != tt.want {
				t.Errorf("PlaceAttachment(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
				continue
			}
			data, err := f.ws.ReadFile(ctx, got)
			if err != nil || string(data) != tt.data {
				t.Errorf("%s holds %q, %v; want %q", got, data, err, tt.data)
			}
		}
		if data, _ := f.ws.ReadFile(ctx, "scratchpad/attachments/invoice.pdf"); string(data) != "%PDF-1\x00\xff" {
			t.Errorf("the first invoice.pdf was overwritten: %q", data)
		}
		if _, err := f.ws.PlaceAttachment(ctx, "../escape", []byte("x")); !errors.Is(err, ErrInvalidAttachmentName) {
			t.Errorf("PlaceAttachment(../escape) err = %v; want ErrInvalidAttachmentName", err)
		}
	})
}

func TestPlaceAttachmentUnderAFile(t *testing.T) {
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		f := newFixture(t)
		f.file(t, "scratchpad/attachments", "a file where the folder belongs")
		if p, err := f.ws.PlaceAttachment(context.Background(), "a.txt", []byte("x")); err == nil {
			t.Errorf("PlaceAttachment below a file = %q; want an error", p)
		}
	})
}
