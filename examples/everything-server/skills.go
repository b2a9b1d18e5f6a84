package main

import (
	"embed"
	"io/fs"
	"log"

	"github.com/e6ac58cb/mcp"
)

// skillsFS holds the skills the server offers by the Skills extension
// (SEP-2640): each directory under skills/ with a SKILL.md is one.
//
//go:embed skills
var skillsFS embed.FS

// addSkills serves the embedded skills.
func addSkills(srv *mcp.Server) {
	sub, err := fs.Sub(skillsFS, "skills")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.AddSkills(sub); err != nil {
		log.Fatal(err)
	}
}
