/* MPI_Allreduce (MPI_DOUBLE, MPI_SUM) timed per call at every rank, written for bench/mp.sh so
 * that MPICH is measured as `weft mp --pattern allreduce` measures itself: per size, WARMUP
 * untimed calls, then ITER timed ones; the median and mean over all ranks' calls are printed.
 *
 * usage: allreduce ITER ITER_LARGE WARMUP SIZE...   (sizes in bytes, multiples of 8)
 * output (rank 0): "allreduce SIZE P50_US MEAN_US"
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define LARGE 8192

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5) {
        if (rank == 0) fprintf(stderr, "usage: allreduce ITER ITER_LARGE WARMUP SIZE...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iter_small = atoi(argv[1]), iter_large = atoi(argv[2]), warmup = atoi(argv[3]);
    for (int a = 4; a < argc; a++) {
        long n = atol(argv[a]);
        long count = n / 8 > 0 ? n / 8 : 1;
        int iter = n > LARGE ? iter_large : iter_small;
        int warm = warmup < iter ? warmup : iter;
        double *in = calloc(count, sizeof(double)), *out = calloc(count, sizeof(double));
        double *t = malloc(sizeof(double) * iter);
        double *all = rank == 0 ? malloc(sizeof(double) * iter * size) : NULL;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -warm; i < iter; i++) {
            double t0 = MPI_Wtime();
            MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (i >= 0) t[i] = MPI_Wtime() - t0;
        }
        MPI_Gather(t, iter, MPI_DOUBLE, all, iter, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            long k = (long)iter * size;
            double sum = 0;
            for (long i = 0; i < k; i++) sum += all[i];
            qsort(all, k, sizeof(double), cmp_double);
            printf("allreduce %ld %.3f %.3f\n", n, all[(k - 1) / 2] * 1e6, sum / k * 1e6);
            fflush(stdout);
            free(all);
        }
        free(in);
        free(out);
        free(t);
    }
    MPI_Finalize();
    return 0;
}
