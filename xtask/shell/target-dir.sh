# Sourced by every task once it is at the repository's root: target_dir,
# the build's target directory, absolute, and exported as CARGO_TARGET_DIR
# so that every cargo and maturin build of the task writes there. It is
# CARGO_TARGET_DIR as given (`cargo xtask` makes a relative one absolute
# against the directory it was run from, as cargo reads it), else target/
# at the root. Every build output, cache and tool of the tasks lives below it.
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
case $target_dir in /*) ;; *) target_dir=$PWD/$target_dir ;; esac
export CARGO_TARGET_DIR=$target_dir
