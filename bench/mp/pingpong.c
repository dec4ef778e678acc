/* Ping-pong between ranks 0 and 1 in the manner of OSU's osu_latency and osu_bw, written for
 * bench/mp.sh so that MPICH is measured exactly as `weft mp --pattern pingpong` measures itself:
 * per size, WARMUP untimed round trips, then ITER timed ones (latency = half of each round trip;
 * the median and the mean are printed), then ITER/10 windows of 64 back-to-back messages acknowledged
 * with 4 bytes (bandwidth = payload / time).
 *
 * usage: pingpong ITER ITER_LARGE WARMUP SIZE...     (sizes in bytes; ITER_LARGE above 8 KiB)
 * output (rank 0): "pingpong SIZE P50_US MEAN_US MBPS" per size
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
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
    if (argc < 5 || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: pingpong ITER ITER_LARGE WARMUP SIZE... (2+ ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iter_small = atoi(argv[1]), iter_large = atoi(argv[2]), warmup = atoi(argv[3]);
    long max = 0;
    for (int a = 4; a < argc; a++)
        if (atol(argv[a]) > max) max = atol(argv[a]);
    char *buf = malloc(max > 4 ? max : 4);
    memset(buf, 1, max > 4 ? max : 4);
    MPI_Request req[WINDOW];
    for (int a = 4; a < argc; a++) {
        long n = atol(argv[a]);
        int iter = n > LARGE ? iter_large : iter_small;
        int warm = warmup < iter ? warmup : iter;
        double *rtt = malloc(sizeof(double) * iter);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -warm; i < iter; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
            if (i >= 0) rtt[i] = MPI_Wtime() - t0;
        }
        int loops = iter / 10 > 2 ? iter / 10 : 2;
        int bw_warm = warm / 10 > 1 ? warm / 10 : 1;
        MPI_Barrier(MPI_COMM_WORLD);
        double tb = 0;
        for (int l = -bw_warm; l < loops; l++) {
            if (l == 0) tb = MPI_Wtime();
            if (rank == 0) {
                for (int w = 0; w < WINDOW; w++)
                    MPI_Isend(buf, n, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Recv(buf, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int w = 0; w < WINDOW; w++)
                    MPI_Irecv(buf, n, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Send(buf, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
            }
        }
        tb = MPI_Wtime() - tb;
        if (rank == 0) {
            double sum = 0;
            for (int i = 0; i < iter; i++) sum += rtt[i];
            qsort(rtt, iter, sizeof(double), cmp_double);
            double p50 = rtt[(iter - 1) / 2];
            double mbps = (double)n * WINDOW * loops * 8.0 / tb / 1e6;
            printf("pingpong %ld %.3f %.3f %.1f\n", n, p50 / 2 * 1e6, sum / iter / 2 * 1e6, mbps);
            fflush(stdout);
        }
        free(rtt);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
