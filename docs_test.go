package shale

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFiles returns the markdown files whose links TestDocLinks checks:
// README.md, CHANGELOG.md and every .md file under docs/.
func docFiles(t *testing.T) []string {
	files := []string{"README.md", "CHANGELOG.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocLinks fails on every relative link (or image) in the docs whose
// target file does not exist. Of a link with an anchor only the file part
// is checked; links with a scheme (http, https, mailto) are not checked.
func TestDocLinks(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range relativeLinks(string(text)) {
			checked++
			if problem := missingTarget(filepath.Dir(file), target); problem != "" {
				t.Errorf("%s: link %q: %s", file, target, problem)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found in the docs: the link parser is broken")
	}
	t.Logf("%d relative links checked", checked)
}

// TestDocLinksFindBrokenLink checks the checker: a page with a broken
// link, an image, an anchor and links the test must leave alone.
func TestDocLinksFindBrokenLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	page := "See [here](here.md#part), [gone](gone.md) and ![a picture](pics/missing.png \"title\").\n" +
		"Also [web](https://example.com/x.md), [mail](mailto:a@b.c), [top](#top) and `[not](a-link.md)`.\n" +
		"```\n[nor](in-a-code-block.md)\n```\n" +
		"\n    [nor](in-an-indented-block.md)\n\n" +
		"[ref]: also-gone.md\n"
	var broken []string
	for _, target := range relativeLinks(page) {
		if missingTarget(dir, target) != "" {
			broken = append(broken, target)
		}
	}
	want := []string{"gone.md", "pics/missing.png", "also-gone.md"}
	if strings.Join(broken, " ") != strings.Join(want, " ") {
		t.Fatalf("broken links found: %q, want %q", broken, want)
	}
}

var (
	// inlineLink matches [text](target) and ![alt](target); group 1 is the
	// target with any title.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)]*)\)`)
	// refLink matches a reference definition, [label]: target.
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	hasScheme  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	codeFences = []string{"```", "~~~"}
)

// relativeLinks returns the targets of the links and images in a markdown
// text that have no scheme, outside code blocks and code spans, in order.
func relativeLinks(text string) []string {
	var targets []string
	inFence, inIndented, prevBlank := false, false, true
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		blank := trimmed == ""
		fence := false
		for _, f := range codeFences {
			fence = fence || strings.HasPrefix(trimmed, f)
		}
		indented := strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
		// An indented code block starts after a blank line (it cannot
		// interrupt a paragraph) and runs while lines stay indented or
		// blank.
		inIndented = !inFence && indented && (prevBlank || inIndented) || inIndented && blank
		prevBlank = blank
		if fence {
			inFence = !inFence
			continue
		}
		if inFence || inIndented {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		var found []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			found = append(found, linkTarget(m[1]))
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			found = append(found, linkTarget(m[1]))
		}
		for _, target := range found {
			if target != "" && !hasScheme.MatchString(target) {
				targets = append(targets, target)
			}
		}
	}
	return targets
}

// linkTarget returns the destination of a link, without its title or
// angle brackets.
func linkTarget(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "<") {
		if end := strings.Index(s, ">"); end > 0 {
			return s[1:end]
		}
	}
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		s = s[:i]
	}
	return s
}

// missingTarget returns why the file a relative link in a page in dir
// points at cannot be found, or "" if it exists. An anchor alone refers to
// the page itself.
func missingTarget(dir, target string) string {
	path, _, _ := strings.Cut(target, "#")
	path, _, _ = strings.Cut(path, "?")
	if path == "" {
		return ""
	}
	path, err := url.PathUnescape(path)
	if err != nil {
		return err.Error()
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path))); err != nil {
		return "no such file"
	}
	return ""
}
