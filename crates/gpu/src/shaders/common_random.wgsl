// Shared by the shaders that draw random numbers (prepended by `shaders.rs`): `splat_train::random` in the
// same u32 arithmetic, so the device draws exactly the host's integers. `seed` is the host's
// `seed_word(seed)`.

fn mix32(v: u32) -> u32 {
    var x = v;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

fn unit(h: u32) -> f32 {
    return (f32(h >> 8u) + 0.5) * (1.0 / 16777216.0);
}

fn hash3(seed: u32, a: u32, b: u32, c: u32) -> u32 {
    return mix32(seed ^ mix32(a ^ mix32(b ^ mix32(c))));
}

fn normal(seed: u32, a: u32, b: u32, c: u32) -> f32 {
    let u1 = unit(hash3(seed, a, b, 2u * c));
    let u2 = unit(hash3(seed, a, b, 2u * c + 1u));
    return -sqrt(-2.0 * log(u1)) * cos(6.2831855 * (u2 - 0.5));
}
