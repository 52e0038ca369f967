use moreau::contact::*;
use moreau::gpu::*;
use nalgebra::{DMatrix, DVector};
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.next()
    }
}
fn random_problem(rng: &mut Lcg, nc: usize) -> ContactProblem {
    let m = 3 * nc;
    let a = DMatrix::from_fn(m, m, |_, _| rng.range(-1.0, 1.0)) / (m as f64).sqrt();
    let g = &a * a.transpose() + DMatrix::identity(m, m) * 0.5;
    let mut free = DVector::from_fn(m, |_, _| rng.range(-1.0, 1.0));
    for i in 0..nc {
        free[3 * i + 2] = rng.range(-1.0, 0.2);
    }
    let mu = (0..nc).map(|_| rng.range(0.1, 1.0)).collect();
    ContactProblem::new(g, free, mu).unwrap()
}
fn main() {
    let kind: SolverKind = std::env::args().nth(1).unwrap().parse().unwrap();
    let maxit: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let mut rng = Lcg(11);
    let mut sizes = vec![1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64];
    for _ in 0..12 {
        sizes.push(1 + (rng.next() * 64.0) as usize);
    }
    if let Ok(v) = std::env::var("SIZES") {
        sizes = v.split(',').map(|x| x.parse().unwrap()).collect();
    }
    let problems: Vec<_> = sizes
        .iter()
        .map(|&nc| random_problem(&mut rng, nc))
        .collect();
    let ctx = GpuContext::new().unwrap();
    let mut s = GpuSolver::new(&ctx, kind, BatchCapacity::uniform(problems.len(), 64)).unwrap();
    let mut out = BatchOutput::default();
    let set = SolverSettings {
        tolerance: std::env::var("TOL")
            .map(|t| t.parse().unwrap())
            .unwrap_or(1e-5),
        max_iterations: maxit,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    s.solve(&problems, &set, &mut out).unwrap();
    println!("time {:?}", t.elapsed());
    let mut cpu = kind.build();
    for i in 0..problems.len() {
        let mut sol = ContactSolution::default();
        cpu.solve(&problems[i], &set, &mut sol).unwrap();
        let o = out.problem(i);
        let dc: f64 =
            o.c.iter()
                .zip(problems[i].g.iter())
                .map(|(a, b)| (*a as f64 - b).abs())
                .fold(0.0, f64::max);
        let dl: f64 = o.lambda.iter().map(|a| a.abs() as f64).fold(0.0, f64::max);
        println!("diff c-g {dc:e} max|l| {dl:e} len {}", o.c.len());
        println!(
            "{i} nc {} {:?} | cpu it {} eps {:e}",
            problems[i].nc(),
            out.problem(i).result,
            sol.stats.iterations,
            sol.stats.residuals.eps_abs
        );
    }
}
