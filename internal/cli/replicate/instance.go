package replicate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gofrs/flock"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// noInstance is the mirrorctl.instance.id (and --instance-id) value that
// turns static membership off.
const noInstance = "none"

// maxSlots bounds the instance slots tried on one host.
const maxSlots = 256

// instance is this process's group.instance.id (replicate.Options) and the
// lock that keeps it this process's on this host.
type instance struct {
	id   string // "" for dynamic membership
	lock *flock.Flock
	note string // why static membership is off, for a warning
}

func (in *instance) release() {
	if in.lock != nil {
		_ = in.lock.Unlock()
	}
}

// chooseInstance returns the process's instance id: --instance-id, else
// MIRRORCTL_INSTANCE_ID, else mirrorctl.instance.id, else
// "<hostname>-<slot>" with the lowest slot no other replicate process on
// this host holds for the same groups (a lock file in the state directory,
// released by the kernel when the process dies, so a restart after kill -9
// takes its slot, and with it its partitions, back). An id named
// explicitly is locked too: a second process on this host under it is
// refused (exit 2). Without a writable state directory the default falls
// back to dynamic membership, said in note; an explicit id is used
// unlocked.
func chooseInstance(explicit string, cfg *config.Config, flows []replicate.FlowConfig, lookupEnv func(string) (string, bool)) (*instance, error) {
	id, where := explicit, "--instance-id"
	if id == "" {
		if v, ok := lookupEnv("MIRRORCTL_INSTANCE_ID"); ok && v != "" {
			id, where = v, "MIRRORCTL_INSTANCE_ID"
		}
	}
	if id == "" && cfg != nil {
		if v, line, _ := cfg.Process(config.KeyInstanceID); v != "" {
			id, where = v, fmt.Sprintf("%s:%d: %s", cfg.File, line, config.KeyInstanceID)
		}
	}
	id = strings.TrimSpace(id)
	if strings.EqualFold(id, noInstance) {
		return &instance{}, nil
	}
	dir := stateDir(lookupEnv)
	if id != "" {
		if err := checkInstanceID(id); err != nil {
			return nil, &replicate.SettingError{Key: config.KeyInstanceID, Msg: where + ": " + err.Error()}
		}
		if dir == "" {
			return &instance{id: id}, nil
		}
		lk := flock.New(filepath.Join(dir, "instance-"+fileSafe(id)+".lock"))
		ok, err := tryLock(dir, lk)
		switch {
		case err != nil:
			return &instance{id: id}, nil // no lock possible here: the coordinator's check remains (claimInstance)
		case !ok:
			return nil, &replicate.SettingError{Key: config.KeyInstanceID,
				Msg: fmt.Sprintf("%s: instance id %q is taken by another replicate process on this host (lock %s): give each process its own", where, id, lk.Path())}
		}
		return &instance{id: id, lock: lk}, nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return &instance{note: "the host has no name to build an instance id from"}, nil
	}
	if dir == "" {
		return &instance{note: "no state directory for the instance slot lock (set XDG_STATE_HOME or HOME)"}, nil
	}
	groups := groupSetKey(flows)
	for n := 0; n < maxSlots; n++ {
		lk := flock.New(filepath.Join(dir, fmt.Sprintf("instance-%s-%d.lock", groups, n)))
		ok, err := tryLock(dir, lk)
		if err != nil {
			return &instance{note: fmt.Sprintf("the instance slot lock in %s cannot be taken (%v)", dir, err)}, nil
		}
		if ok {
			return &instance{id: fmt.Sprintf("%s-%d", host, n), lock: lk}, nil
		}
	}
	return &instance{note: fmt.Sprintf("all %d instance slots of this host are taken", maxSlots)}, nil
}

// tryLock creates dir if needed and takes lk without waiting.
func tryLock(dir string, lk *flock.Flock) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	return lk.TryLock()
}

// checkInstanceID refuses ids a coordinator would refuse or that cannot be
// told apart in logs: empty, over 249 characters (Kafka's limit for group
// ids, kept for instance ids too), or holding control characters.
func checkInstanceID(id string) error {
	if len(id) > 249 {
		return fmt.Errorf("instance id is %d characters, over 249", len(id))
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("instance id %q holds control characters", id)
		}
	}
	return nil
}

// stateDir is mirrorctl's state directory: $XDG_STATE_HOME/mirrorctl, else
// ~/.local/state/mirrorctl; "" when neither can be found.
func stateDir(lookupEnv func(string) (string, bool)) string {
	if d, ok := lookupEnv("XDG_STATE_HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, "mirrorctl")
	}
	home, ok := lookupEnv("HOME")
	if !ok || home == "" {
		h, err := os.UserHomeDir()
		if err != nil || h == "" {
			return ""
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "mirrorctl")
}

// groupSetKey names the set of groups flows join, for the slot lock: the
// processes that share a slot space are those that join the same groups.
func groupSetKey(flows []replicate.FlowConfig) string {
	var ids []string
	for _, f := range flows {
		ids = append(ids, f.GroupID)
	}
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\x00")))
	return hex.EncodeToString(sum[:6])
}

// fileSafe is id with what a file name cannot hold replaced.
func fileSafe(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
}
