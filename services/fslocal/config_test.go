package fslocal_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-go/harness/services/fslocal"
)

func TestConfigDefaults(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)

	t.Run("L-01 zero Config: Cwd is the process working directory and DiffBasisMaxBytes is 10485760", func(t *testing.T) {
		f, err := fslocal.New(fslocal.Config{}, nil)
		require.NoError(t, err)
		cfg := f.Config()
		assert.Equal(t, filepath.Clean(wd), cfg.Cwd)
		assert.Equal(t, int64(10485760), cfg.DiffBasisMaxBytes)
		assert.Equal(t, int64(fslocal.DefaultDiffBasisMaxBytes), cfg.DiffBasisMaxBytes)
	})

	t.Run("L-01 Validate applies the same defaults without mutating the receiver", func(t *testing.T) {
		in := fslocal.Config{}
		out, err := in.Validate()
		require.NoError(t, err)
		assert.Equal(t, filepath.Clean(wd), out.Cwd)
		assert.Equal(t, int64(10485760), out.DiffBasisMaxBytes)
		assert.Equal(t, fslocal.Config{}, in)
	})

	t.Run("L-01 the relative paths of a default backend resolve under the process working directory", func(t *testing.T) {
		f, err := fslocal.New(fslocal.Config{}, nil)
		require.NoError(t, err)
		tg := resolve(t, f, "some-file.txt")
		assert.Equal(t, filepath.Join(wd, "some-file.txt"), tg.DisplayPath)
	})
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	maxStr := strconv.FormatInt(fslocal.MaxDiffBasisBytes, 10)

	cases := []struct {
		name    string
		cfg     fslocal.Config
		wantErr []string // substrings of the error; nil means accepted
		check   func(t *testing.T, got fslocal.Config)
	}{
		{
			name: "L-02 DiffBasisMaxBytes equal to MaxDiffBasisBytes is accepted",
			cfg:  fslocal.Config{Cwd: dir, DiffBasisMaxBytes: fslocal.MaxDiffBasisBytes},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, int64(fslocal.MaxDiffBasisBytes), got.DiffBasisMaxBytes)
			},
		},
		{
			name: "L-02 DiffBasisMaxBytes of 1 is accepted",
			cfg:  fslocal.Config{Cwd: dir, DiffBasisMaxBytes: 1},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, int64(1), got.DiffBasisMaxBytes)
			},
		},
		{
			name: "L-03 adapted: DiffBasisMaxBytes of 0 means the default in Go",
			cfg:  fslocal.Config{Cwd: dir, DiffBasisMaxBytes: 0},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, int64(fslocal.DefaultDiffBasisMaxBytes), got.DiffBasisMaxBytes)
			},
		},
		{
			name:    "L-03 DiffBasisMaxBytes of -1 is rejected",
			cfg:     fslocal.Config{Cwd: dir, DiffBasisMaxBytes: -1},
			wantErr: []string{"DiffBasisMaxBytes", maxStr, "-1"},
		},
		{
			name:    "L-03 DiffBasisMaxBytes of MaxDiffBasisBytes+1 is rejected",
			cfg:     fslocal.Config{Cwd: dir, DiffBasisMaxBytes: fslocal.MaxDiffBasisBytes + 1},
			wantErr: []string{"DiffBasisMaxBytes", maxStr},
		},
		{
			name:    "L-03 DiffBasisMaxBytes of 2^53 is rejected",
			cfg:     fslocal.Config{Cwd: dir, DiffBasisMaxBytes: 1 << 53},
			wantErr: []string{"DiffBasisMaxBytes"},
		},
		{
			name:    "L-01 a relative Cwd is rejected",
			cfg:     fslocal.Config{Cwd: "relative/dir"},
			wantErr: []string{"Cwd", "absolute", `"relative/dir"`},
		},
		{
			name:    "L-01 a dot-relative Cwd is rejected",
			cfg:     fslocal.Config{Cwd: "./dir"},
			wantErr: []string{"Cwd"},
		},
		{
			name: "spec difference 18: an empty Durability is full",
			cfg:  fslocal.Config{Cwd: dir},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, fslocal.DurabilityFull, got.Durability)
			},
		},
		{
			name: "spec difference 18: atomic is accepted",
			cfg:  fslocal.Config{Cwd: dir, Durability: fslocal.DurabilityAtomic},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, fslocal.DurabilityAtomic, got.Durability)
			},
		},
		{
			name:    "an unknown Durability is rejected",
			cfg:     fslocal.Config{Cwd: dir, Durability: "fsync"},
			wantErr: []string{"Durability", `"full"`, `"atomic"`, `"fsync"`},
		},
		{
			name:    "a NewOwner with a negative id is rejected",
			cfg:     fslocal.Config{Cwd: dir, NewOwner: &fslocal.Owner{UID: -1, GID: 0}},
			wantErr: []string{"NewOwner", "-1"},
		},
		{
			name: "L-01 an absolute Cwd is cleaned",
			cfg:  fslocal.Config{Cwd: dir + "/x/../"},
			check: func(t *testing.T, got fslocal.Config) {
				assert.Equal(t, filepath.Clean(dir), got.Cwd)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, verr := tc.cfg.Validate()
			f, nerr := fslocal.New(tc.cfg, nil)
			if tc.wantErr != nil {
				require.Error(t, verr)
				require.Error(t, nerr)
				assert.Nil(t, f)
				assert.Equal(t, verr.Error(), nerr.Error(), "New reports the Validate error")
				for _, s := range tc.wantErr {
					assert.Contains(t, nerr.Error(), s)
				}
				return
			}
			require.NoError(t, verr)
			require.NoError(t, nerr)
			require.NotNil(t, f)
			assert.Equal(t, got, f.Config())
			tc.check(t, f.Config())
		})
	}
}
