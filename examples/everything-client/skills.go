package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/e6ac58cb/mcp"
)

// listSkills builds the skill registry from skills/list alone, as a host
// does on connecting: it reads no skill file.
func listSkills(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	n := 0
	for skill, err := range c.Skills(ctx) {
		if err != nil {
			return err
		}
		log.Printf("skill %s: %v", skill.URI, skill.Frontmatter["description"])
		n++
	}
	log.Printf("%d skills listed, none read", n)
	return nil
}

// loadFirstSkill loads the first listed skill (its SKILL.md, verified
// against the entry) and then reads its other files, each verified. A
// file that fails verification is refused and the skill is not used: that
// ends the flow successfully, since refusing is the right outcome.
func loadFirstSkill(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	res, err := c.ListSkills(ctx, "")
	if err != nil {
		return err
	}
	if len(res.Skills) == 0 {
		return errors.New("skills/list listed no skill")
	}
	skill := res.Skills[0]
	for _, uri := range append([]string{skill.URI}, otherFiles(skill)...) {
		data, err := c.ReadSkillFile(ctx, skill, uri)
		var bad *mcp.SkillVerificationError
		if errors.As(err, &bad) {
			log.Printf("refused: %v", bad)
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", uri, err)
		}
		log.Printf("read %s: %d bytes, verified", uri, len(data))
	}
	return nil
}

// otherFiles lists a skill's files but its SKILL.md.
func otherFiles(skill *mcp.Skill) []string {
	var uris []string
	for _, f := range skill.Resources {
		if f.URI != skill.URI {
			uris = append(uris, f.URI)
		}
	}
	return uris
}
