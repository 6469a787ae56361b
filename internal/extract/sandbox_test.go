package extract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// childEnv makes the test binary the sandbox's child (TestMain).
const childEnv = "SOVEREIGN_EXTRACT_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := ServeChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testSandbox runs the test binary itself as the child, the variable set
// for the child alone (env(1)): set in this process, it would reach the
// fuzzing engine's workers too, which would then serve as children.
func testSandbox(b Budget) Sandbox {
	return Sandbox{Command: []string{"env", childEnv + "=1", os.Args[0]}, Budget: b}
}

// extendingPDF is objStmPDF whose object stream does not hold the object
// the cross-reference puts in it and extends itself, the /Extends name
// written with a #-escape ("/Ext#65nds") that a byte search does not
// find: the reader follows the chain for ever.
func extendingPDF(escape string) []byte {
	return objStmPDFDict("<< /Type /Pages /Kids [4 0 R] /Count 1 >>", "/Type /ObjStm /N 1 /"+escape+" 3 0 R", 9)
}

// TestSandboxReadsPDFs: a PDF read in the child gives what it gives in
// process, its errors keep their kind, and other formats are read in
// process.
func TestSandboxReadsPDFs(t *testing.T) {
	s := testSandbox(Budget{Time: 20 * time.Second})
	pdf := pagesPDF("<< /Title (Engines) >>", "BT /F1 12 Tf 72 720 Td (The zorblat engine runs on purple coolant.) Tj ET")
	doc, err := s.Extract(context.Background(), "a.pdf", "", pdf)
	if err != nil || doc.Text != "The zorblat engine runs on purple coolant." || doc.Title != "Engines" || doc.Format != FormatPDF {
		t.Fatalf("%+v, %v", doc, err)
	}
	_, err = s.Extract(context.Background(), "a.pdf", "", []byte("%PDF-1.4\nnot a pdf at all"))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("malformed PDF: %v", err)
	}
	s.Command = []string{"/nonexistent/child"} // text never starts it
	if doc, err := s.Extract(context.Background(), "a.txt", "", []byte("plain text")); err != nil || doc.Text != "plain text" {
		t.Fatalf("text: %+v, %v", doc, err)
	}
}

// TestSandboxEndsHostilePDFs: a PDF whose object stream extends itself
// (behind a #-escape the preflight does not see) is stopped at the time
// budget and reported as malformed, naming the budget; a cancelled
// context stops the child at once.
func TestSandboxEndsHostilePDFs(t *testing.T) {
	s := testSandbox(Budget{Time: 2 * time.Second})
	for _, escape := range []string{"Ext#65nds", "#45xtends", "Extends"} {
		start := time.Now()
		_, err := s.Extract(context.Background(), "hostile.pdf", "", extendingPDF(escape))
		took := time.Since(start)
		if took > 6*time.Second {
			t.Fatalf("%s: took %s", escape, took)
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%s: %v", escape, err)
		}
		// The escaped ones pass the preflight: only the budget stops them.
		if strings.Contains(escape, "#") && !strings.Contains(err.Error(), "time budget of 2s") {
			t.Fatalf("%s: %v, want the time budget named", escape, err)
		}
		t.Logf("%s: %v after %s", escape, err, took.Round(time.Millisecond))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	if _, err := s.Extract(ctx, "hostile.pdf", "", extendingPDF("Ext#65nds")); !errors.Is(err, context.Canceled) || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("cancelled: %v after %s", err, time.Since(start))
	}
}

// FuzzSandboxHostilePDF: object streams that extend themselves under any
// spelling of the name, nest, or claim any count, read in the child, end
// within the budget every time.
func FuzzSandboxHostilePDF(f *testing.F) {
	f.Add("Ext#65nds", 1, 3)
	f.Add("#45#78#74#65#6e#64#73", 100000, 3)
	f.Add("Extends", 2147483647, 2)
	f.Add("Ex#74ends", 0, 1)
	s := testSandbox(Budget{Time: 2 * time.Second})
	f.Fuzz(func(t *testing.T, name string, n, target int) {
		if len(name) > 64 || strings.ContainsAny(name, " /\n\r<>[]()") {
			return
		}
		pdf := objStmPDFDict("<< /Type /Pages /Kids [4 0 R] /Count 1 >>", fmt.Sprintf("/Type /ObjStm /%s %d 0 R /N %d", name, target, n), 9)
		start := time.Now()
		s.Extract(context.Background(), "f.pdf", "", pdf)
		if took := time.Since(start); took > 6*time.Second {
			t.Fatalf("%q %d %d: %s", name, n, target, took)
		}
	})
}
