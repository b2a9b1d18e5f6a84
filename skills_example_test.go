package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/e6ac58cb/mcp"
)

// A server offers a folder of agent skills; a client lists them, which
// reads no file, then loads one skill when it needs it: ReadSkillFile
// checks the SKILL.md against the listing's digest, size and frontmatter.
// A file the skill does not list is refused.
func ExampleServer_AddSkills() {
	skills := fstest.MapFS{ // or os.DirFS("skills"), or an embed.FS
		"git-workflow/SKILL.md":              {Data: []byte("---\nname: git-workflow\ndescription: Follow the team's Git conventions\n---\n\nBranch from main; see references/COMMITS.md.\n")},
		"git-workflow/references/COMMITS.md": {Data: []byte("Write commit messages in the imperative.\n")},
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "skills", Version: "1.0.0"})
	if err := srv.AddSkills(skills); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "host", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	list, err := client.ListSkills(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	skill := list.Skills[0]
	fmt.Println(skill.URI, "-", skill.Frontmatter["description"], "-", len(skill.Resources), "files")
	manifest, err := client.ReadSkillFile(ctx, skill, skill.URI)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loaded SKILL.md: %d bytes, verified\n", len(manifest))
	_, err = client.ReadSkillFile(ctx, skill, "skill://git-workflow/secrets.md")
	var bad *mcp.SkillVerificationError
	if errors.As(err, &bad) {
		fmt.Println("refused:", bad.Check)
	}
	// Output:
	// skill://git-workflow/SKILL.md - Follow the team's Git conventions - 2 files
	// loaded SKILL.md: 120 bytes, verified
	// refused: unlisted
}
