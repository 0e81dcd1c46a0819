//! Hand-written per-core modules shared by the linker's tests.
#![allow(dead_code)]

/// Core 0 produces `y` (an output) that core 1 consumes through a view
/// declared as an output; core 1 declares an output nobody writes.
pub const OUTPUTS_0: &str = "module demo lnc 2 core 0
queue q0 dynamic owner sp sems 2 instances 0
loc x dram input i32[4] @0x0
loc y dram output i32[4] @0x1000
loc out0 dram output i32[4] @0x2000
func main
  args x, y, out0
  block entry
    a = dve relu x[0..4] -> y[0..4] core 0
    cb = sp barrier group 0 cores 0,1 id 0 flagged after a:ctl
    b = sp dma y[0..4] -> out0[0..4] queue q0 core 0 after a
";

/// See [`OUTPUTS_0`].
pub const OUTPUTS_1: &str = "module demo lnc 2 core 1
loc y_in1 dram output i32[4] @0x1000 remote y core 0
loc z dram internal i32[4]
loc out1 dram output i32[4] @0x3000
loc unused dram output i32[4] @0x4000
func main
  args y_in1, out1, unused
  block entry
    cb = sp barrier group 0 cores 0,1 id 0 flagged
    c = dve add y_in1[0..4], y_in1[0..4] -> z[0..4] core 1 after cb:ctl
    d = pool dma z[0..4] -> out1[0..4] core 1 after c
";

/// Core 0 produces `t` in the shared region; core 1 reads it through `t_in1`.
pub const SHARED_0: &str = "module demo lnc 2 core 0
loc x dram input i32[8] @0x0
loc t dram shared i32[8] @0x100 part 1 bank 2 shared_post_alloc
func main
  block entry
    a = dve relu x[0..8] -> t[0..8]
    cb = sp barrier group 0 cores 0,1 id 0 flagged after a:ctl
";

/// See [`SHARED_0`].
pub const SHARED_1: &str = "module demo lnc 2 core 1
loc t_in1 dram shared i32[8] @0x100 part 1 bank 2 shared_post_alloc remote t core 0
loc o dram output i32[8] @0x1000
func main
  block entry
    cb = sp barrier group 0 cores 0,1 id 0 flagged
    b = sp dma t_in1[0..8] -> o[0..8] after cb:ctl
";
