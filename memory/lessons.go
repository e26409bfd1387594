package memory

import (
	"context"
	"encoding/json"

	"github.com/agentos-run/agentos/driver"
)

// Driver is the driver name of a run's memory calls (the lessons
// recalled into an agent's or a forge's prompt), journaled like its model
// calls.
const Driver = "memory"

// OpLessons is Driver's operation: LessonsRequest -> LessonsAnswer.
const OpLessons = "lessons"

// LessonsRequest asks for the lessons of Agents most relevant to Query.
type LessonsRequest struct {
	Agents []string `json:"agents"`
	Query  string   `json:"query"`
	Limit  int      `json:"limit"`
}

// LessonsAnswer is the lessons found, best first.
type LessonsAnswer struct {
	Lessons []string `json:"lessons"`
}

// minLessonScore is the score (0..1) a lesson needs to be recalled into a
// prompt: a lesson sharing one common word with the task is noise.
const minLessonScore = 0.15

// LessonsDevice answers OpLessons from store: the lessons (kind lesson) of
// the agents asked, merged by score, at least minLessonScore.
func LessonsDevice(store *Store) driver.Device {
	return driver.DeviceFunc(func(_ context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if op != OpLessons {
			return nil, driver.Errorf(driver.CodeUnsupported, "memory has no operation %q (use %q)", op, OpLessons)
		}
		var r LessonsRequest
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "memory.lessons: bad request: %v", err)
		}
		var hits []Hit
		for _, a := range r.Agents {
			h, err := store.Recall(a, r.Query, RecallOptions{Limit: r.Limit, Kinds: []Kind{Lesson}})
			if err != nil {
				return nil, driver.Errorf(driver.CodeIO, "memory.lessons: %v", err)
			}
			hits = append(hits, h...)
		}
		out := LessonsAnswer{Lessons: []string{}}
		for len(out.Lessons) < r.Limit && len(hits) > 0 {
			best := 0
			for i := range hits {
				if hits[i].Score > hits[best].Score {
					best = i
				}
			}
			if hits[best].Score < minLessonScore {
				break
			}
			if !contains(out.Lessons, hits[best].Text) {
				out.Lessons = append(out.Lessons, hits[best].Text)
			}
			hits = append(hits[:best], hits[best+1:]...)
		}
		return json.Marshal(out)
	})
}
