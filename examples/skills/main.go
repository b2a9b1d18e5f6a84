// Command skills shows the Skills extension (SEP-2640) end to end, a
// server and a client in one process: the server offers the folder
// skills/ (embedded) with AddSkills; the client lists the skills, which
// reads no file, loads one when it needs it (its SKILL.md, verified against
// the listing's digest, size and frontmatter), lists the skill's folder
// and reads a supporting file, verified the same way.
//
//	go run ./examples/skills
package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"strings"

	"github.com/e6ac58cb/mcp"
)

//go:embed skills
var skillsFS embed.FS

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves the embedded skills to a client over in-memory transports and
// writes what the client sees to out.
func run(ctx context.Context, out io.Writer, clientOpts ...mcp.ClientOption) error {
	folder, err := fs.Sub(skillsFS, "skills")
	if err != nil {
		return err
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "skills-server", Version: "1.0.0"})
	if err := srv.AddSkills(folder); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "skills-client", Version: "1.0.0"}, clientOpts...)
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(out, "connected (protocol %s)\n", client.ProtocolVersion())

	// The registry: names and descriptions from the listing alone.
	var skills []*mcp.Skill
	for skill, err := range client.Skills(ctx) {
		if err != nil {
			return err
		}
		skills = append(skills, skill)
		fmt.Fprintf(out, "skill %s: %s (%d files)\n", skill.Frontmatter["name"], skill.Frontmatter["description"], len(skill.Resources))
	}

	// Loading the skill: its SKILL.md, when the model asks for it.
	skill := skills[0]
	manifest, err := client.ReadSkillFile(ctx, skill, skill.URI)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "loaded %s: %q\n", skill.URI, firstLine(manifest, "# "))

	// The skill points at a folder: list it, then read the file in it.
	root := strings.TrimSuffix(skill.URI, "/SKILL.md")
	dir, err := client.ReadSkillDirectory(ctx, root+"/templates", "")
	if err != nil {
		return err
	}
	for _, r := range dir.Resources {
		data, err := client.ReadSkillFile(ctx, skill, r.URI)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "read %s (%s): %q\n", r.URI, r.MIMEType, firstLine(data, "## "))
	}
	return nil
}

// firstLine returns the first line of data that starts with prefix.
func firstLine(data []byte, prefix string) string {
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
